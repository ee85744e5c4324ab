/** How the bridge asks an agent's model for a thread title (memoryOptions.generateTitle). */
export const TITLE_PROMPT = 'Write a short title (at most six words) for a conversation that starts with: ';
