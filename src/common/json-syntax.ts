// The syntax of JSON's numbers and strings, checked where they are without building them: the part
// of JsonLimitScan (json-limit-scan.ts) that finds where each ends and how long a string is once
// decoded. A base class rather than a helper object, so the scan's hot loop reads its own fields.

const HEX4 = /[0-9a-fA-F]{4}/y;
// eslint-disable-next-line no-control-regex -- raw control characters are what JSON strings must not hold
const CONTROL = /[\u0000-\u001f]/g;

/** The end of the decimal digits from `at`. */
function digits(text: string, at: number): number {
  let c = text.charCodeAt(at);
  while (c >= 0x30 && c <= 0x39) c = text.charCodeAt(++at);
  return at;
}

/** A JSON text read from `pos` on: its numbers and strings, each string across as many slices as it takes. */
export abstract class JsonSyntax {
  protected pos = 0;
  protected notJson = false;
  /** Where the next `"`, `\` and raw control character are (at or after the position they were looked for from). */
  private nextQuote = -1;
  private nextEscape = -1;
  private nextControl = -1;
  /** Inside a string (a slice may end in one): where its escapes are looked for from, else -1. */
  protected stringFrom = -1;
  /** Of the string being scanned: characters its escapes save once decoded. */
  protected stringShorter = 0;

  constructor(protected readonly text: string) {}

  /** A string ended at `end` (its closing quote), `length` characters once decoded. */
  protected abstract stringEnded(end: number, length: number): void;

  /** `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` at `pos`, as JSON has it. */
  protected number(): void {
    const text = this.text;
    let p = this.pos;
    if (text.charCodeAt(p) === 0x2d) p++;
    const first = text.charCodeAt(p);
    if (first === 0x30) p++;
    else if (first >= 0x31 && first <= 0x39) p = digits(text, p + 1);
    else return void (this.notJson = true);
    if (text.charCodeAt(p) === 0x2e) {
      const after = digits(text, p + 1);
      if (after === p + 1) return void (this.notJson = true);
      p = after;
    }
    const e = text.charCodeAt(p);
    if (e === 0x65 || e === 0x45) {
      const sign = text.charCodeAt(p + 1);
      const from = sign === 0x2b || sign === 0x2d ? p + 2 : p + 1;
      p = digits(text, from);
      if (p === from) return void (this.notJson = true);
    }
    this.pos = p;
  }

  /**
   * Goes on with the string that starts at `pos` (from `stringFrom`), up to `stop`: true when it
   * ended ({@link stringEnded}), false when the slice did first or it is not JSON (no closing quote,
   * a raw control character, a bad escape). Where the next quote, backslash and control character
   * are is kept, so no part of the text is searched twice.
   */
  protected string(stop: number): boolean {
    const text = this.text;
    let from = this.stringFrom;
    for (;;) {
      if (this.nextQuote < from) this.nextQuote = text.indexOf('"', from);
      if (this.nextQuote < 0) return this.fail();
      if (this.nextEscape < from) {
        const at = text.indexOf('\\', from);
        this.nextEscape = at < 0 ? Infinity : at;
      }
      if (this.nextControl < from) {
        CONTROL.lastIndex = from;
        this.nextControl = CONTROL.exec(text)?.index ?? Infinity;
      }
      const quote = this.nextQuote;
      if (this.nextControl < Math.min(quote, this.nextEscape)) return this.fail();
      if (this.nextEscape > quote) {
        this.stringEnded(quote, quote - this.pos - 1 - this.stringShorter);
        return true;
      }
      if (from >= stop) {
        this.stringFrom = from;
        return false;
      }
      const at = this.nextEscape;
      const e = text.charCodeAt(at + 1);
      if (e === 0x75) {
        HEX4.lastIndex = at + 2;
        if (!HEX4.test(text)) return this.fail();
        this.stringShorter += 5;
        from = at + 6;
      } else if (
        e === 0x22 ||
        e === 0x5c ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      ) {
        this.stringShorter += 1;
        from = at + 2;
      } else return this.fail();
    }
  }

  private fail(): false {
    this.notJson = true;
    this.stringFrom = -1;
    return false;
  }
}
