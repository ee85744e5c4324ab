/** Ids (threads, runs, messages, tool calls, owners) appear in URLs and logs: printable ASCII, no spaces. */
export const ID_PATTERN = /^[\x21-\x7E]{1,200}$/;
export const ID_MESSAGE = '$property must be 1-200 printable ASCII characters without spaces';
