import type { BodyLimits, RunBodyLimits } from './body-limits';
import { DomainError } from './errors';
import { JsonSyntax } from './json-syntax';

/** Why a JSON text cannot be taken: not JSON at all, or a limit broken (with its refusal). */
export type ScanVerdict = { ok: true } | { ok: false; invalid: true } | { ok: false; error: DomainError };

const OBJECT = 0;
const ARRAY = 1;

// What the next token may be.
const VALUE = 0;
const VALUE_OR_CLOSE = 1; // after `[`
const KEY = 2; // after `,` in an object
const KEY_OR_CLOSE = 3; // after `{`
const COLON = 4;
const AFTER_VALUE = 5;
const END = 6;

// What a container is to a `POST /run` body (RunAgentInput).
const NONE = 0;
const ROOT = 1;
const MESSAGES = 2;
const TOOLS = 3;
const CONTEXT = 4;
const MESSAGE = 5;
const PARTS = 6;
const FORWARDED_PROPS = 7;

const tooLarge = (path: string, message: string) =>
  new DomainError('PAYLOAD_TOO_LARGE', 'The request body is too large', [{ path, message }]);
const invalid = (path: string, message: string) =>
  new DomainError('VALIDATION_FAILED', 'The request is invalid', [{ path, message }]);

/**
 * Checks a JSON text against the body limits (docs/limits.md) without building it: a tokenizer that
 * counts values, lengths and nesting, and for a `POST /run` body (`run` given) its lists, each
 * message's content parts and forwardedProps' keys. It holds a few numbers per nesting level and
 * never a value, so a refused body costs a scan of its text, not the objects it would make.
 *
 * The verdict has the status and code the checks of the parsed body gave (body-limits.ts), in
 * their order: text that is not JSON (400, as JSON.parse refuses it) or a `RunAgentInput` list longer
 * than its limit (messages, tools, context, a message's content parts: 400 naming it), then the
 * first of values, string and key lengths and nesting crossed in the text's order, then
 * forwardedProps' keys. The scan stops at the first list over its limit (nothing can change that
 * answer's status and code; among several such lists, the first in the text is named) or where the
 * text stops being JSON; past any other limit it goes on to the end (at most MAX_BODY_BYTES), as a
 * 400 further on outranks it, and {@link step} lets a caller do it in slices.
 */
export class JsonLimitScan extends JsonSyntax {
  private expect = VALUE;
  /** Open containers: their kind at each level (only the first `tracked` levels keep the rest). */
  private kinds = new Uint8Array(64);
  private depth = 0;
  private readonly tracked: number;
  /** At each tracked level: children seen, the current member's key (raw span), the container's role. */
  private readonly counts: number[] = [];
  private readonly keyStart: number[] = [];
  private readonly keyEnd: number[] = [];
  private readonly roles: number[] = [];
  private values = 0;
  private forwardedPropsKeys = 0;
  /** The message whose content a PARTS container is. */
  private partsOf = 0;
  /** Whether the string being scanned is a key. */
  private stringIsKey = false;
  /** The first list (or message's content parts) over its limit: the scan stops there. */
  private listError: DomainError | undefined;
  private bodyError: DomainError | undefined;
  private propsError: DomainError | undefined;

  constructor(
    text: string,
    private readonly limits: BodyLimits,
    private readonly run?: RunBodyLimits,
  ) {
    super(text);
    // Paths need the keys down to the deepest level the limits allow; a run's roles three levels down.
    this.tracked = Math.max(limits.maxDepth, 4) + 1;
    // JSON.parse after secure-json-parse takes a leading byte order mark.
    if (text.charCodeAt(0) === 0xfeff) this.pos = 1;
  }

  /** Scanned to the end, or found not to be JSON. */
  get done(): boolean {
    return this.notJson || !!this.listError || (this.pos >= this.text.length && this.stringFrom < 0);
  }

  /** The verdict, once {@link done}. */
  verdict(): ScanVerdict {
    if (this.notJson) return { ok: false, invalid: true };
    if (this.listError) return { ok: false, error: this.listError };
    if (this.expect !== END) return { ok: false, invalid: true };
    const error = this.bodyError ?? this.propsError;
    return error ? { ok: false, error } : { ok: true };
  }

  /** Scans about `chars` more characters (a number or literal that starts within them is finished). */
  step(chars: number): void {
    const text = this.text;
    const stop = Math.min(text.length, (this.stringFrom < 0 ? this.pos : this.stringFrom) + chars);
    while (!this.notJson && !this.listError) {
      if (this.stringFrom >= 0) {
        if (!this.string(stop)) return;
        continue;
      }
      if (this.pos >= stop) return;
      const c = text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        this.pos++;
        continue;
      }
      const expect = this.expect;
      if ((expect === VALUE_OR_CLOSE && c === 0x5d) || (expect === KEY_OR_CLOSE && c === 0x7d)) {
        this.close(expect === VALUE_OR_CLOSE ? ARRAY : OBJECT);
        continue;
      }
      switch (expect) {
        case VALUE_OR_CLOSE:
        case VALUE:
          this.value(c);
          break;
        case KEY_OR_CLOSE:
        case KEY:
          if (c === 0x22) this.startString(true);
          else this.notJson = true;
          break;
        case COLON:
          if (c === 0x3a) {
            this.pos++;
            this.expect = VALUE;
          } else this.notJson = true;
          break;
        case AFTER_VALUE: {
          const kind = this.kinds[this.depth - 1];
          if (c === 0x2c) {
            this.pos++;
            this.expect = kind === ARRAY ? VALUE : KEY;
          } else if ((c === 0x5d && kind === ARRAY) || (c === 0x7d && kind === OBJECT)) this.close(kind);
          else this.notJson = true;
          break;
        }
        default:
          this.notJson = true;
      }
    }
  }

  private value(c: number): void {
    this.counted(this.depth - 1);
    if (c === 0x7b || c === 0x5b) return this.open(c === 0x7b ? OBJECT : ARRAY);
    if (c === 0x22) return this.startString(false);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) this.number();
    else {
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : c === 0x6e ? 'null' : '';
      if (!word || !this.text.startsWith(word, this.pos)) return void (this.notJson = true);
      this.pos += word.length;
    }
    this.expect = this.depth ? AFTER_VALUE : END;
  }

  /** A value starts in the container at `parent` (-1: the root): it is counted, there and in the body. */
  private counted(parent: number): void {
    if (++this.values > this.limits.maxValues && !this.bodyError) {
      this.bodyError = tooLarge(
        this.pathTo(parent < 0 ? 0 : parent),
        `the body holds more than ${this.limits.maxValues} JSON values`,
      );
    }
    if (parent < 0 || parent >= this.tracked || this.kinds[parent] !== ARRAY) return;
    const count = ++this.counts[parent];
    const role = this.roles[parent];
    const run = this.run;
    if (!run || role === NONE) return;
    if (role === MESSAGES && count > run.maxMessages)
      this.listed('messages', run.maxMessages, 'messages per run');
    else if (role === TOOLS && count > run.maxTools) this.listed('tools', run.maxTools, 'tools per run');
    else if (role === CONTEXT && count > run.maxContext)
      this.listed('context', run.maxContext, 'context entries per run');
    else if (role === PARTS && count > run.maxContentParts) {
      const path = `messages.${this.partsOf}.content`;
      this.listed(path, run.maxContentParts, 'content parts per message');
    }
  }

  private listed(path: string, max: number, what: string): void {
    this.listError = invalid(path, `at most ${max} ${what}`);
  }

  private open(kind: number): void {
    const level = this.depth;
    if (!this.bodyError && level >= this.limits.maxDepth) {
      this.bodyError = invalid(this.pathTo(level), `nesting deeper than ${this.limits.maxDepth} levels`);
    }
    if (level === this.kinds.length) {
      const grown = new Uint8Array(this.kinds.length * 2);
      grown.set(this.kinds);
      this.kinds = grown;
    }
    this.kinds[level] = kind;
    if (level < this.tracked) {
      this.counts[level] = 0;
      this.keyStart[level] = this.keyEnd[level] = -1;
      this.roles[level] = this.roleOf(kind, level);
    }
    this.depth++;
    this.pos++;
    this.expect = kind === ARRAY ? VALUE_OR_CLOSE : KEY_OR_CLOSE;
  }

  private close(kind: number): void {
    if (this.depth === 0 || this.kinds[this.depth - 1] !== kind) return void (this.notJson = true);
    this.depth--;
    this.pos++;
    this.expect = this.depth ? AFTER_VALUE : END;
  }

  private startString(isKey: boolean): void {
    this.stringFrom = this.pos + 1;
    this.stringShorter = 0;
    this.stringIsKey = isKey;
  }

  protected stringEnded(end: number, length: number): void {
    const key = this.stringIsKey;
    this.stringFrom = -1;
    if (key) this.keyEnded(end, length);
    else if (!this.bodyError && length > this.limits.maxStringLength) {
      this.bodyError = tooLarge(
        this.pathTo(this.depth),
        `longer than ${this.limits.maxStringLength} characters`,
      );
    }
    this.pos = end + 1;
    this.expect = key ? COLON : this.depth ? AFTER_VALUE : END;
  }

  private keyEnded(end: number, length: number): void {
    const level = this.depth - 1;
    if (level < this.tracked) {
      this.counts[level]++;
      this.keyStart[level] = this.pos + 1;
      this.keyEnd[level] = end;
    }
    if (!this.bodyError && length > this.limits.maxStringLength) {
      this.bodyError = tooLarge(
        this.pathTo(level),
        `a key is longer than ${this.limits.maxStringLength} characters`,
      );
    }
    if (this.run && level >= 1 && this.roles[1] === FORWARDED_PROPS && !this.propsError) {
      if (++this.forwardedPropsKeys > this.run.maxForwardedPropsKeys) {
        this.propsError = tooLarge('forwardedProps', `at most ${this.run.maxForwardedPropsKeys} keys`);
      }
    }
  }

  /** What a container opening at `level` is to a `RunAgentInput`. */
  private roleOf(kind: number, level: number): number {
    if (!this.run) return NONE;
    if (level === 0) return kind === OBJECT ? ROOT : NONE;
    const parent = this.roles[level - 1];
    if (parent === ROOT) {
      if (this.keyIs(level - 1, 'forwardedProps')) return FORWARDED_PROPS;
      if (kind !== ARRAY) return NONE;
      if (this.keyIs(level - 1, 'messages')) return MESSAGES;
      if (this.keyIs(level - 1, 'tools')) return TOOLS;
      return this.keyIs(level - 1, 'context') ? CONTEXT : NONE;
    }
    if (parent === MESSAGES) return kind === OBJECT ? MESSAGE : NONE;
    if (parent === MESSAGE && kind === ARRAY && this.keyIs(level - 1, 'content')) {
      this.partsOf = this.counts[level - 2] - 1;
      return PARTS;
    }
    return NONE;
  }

  /** Whether the current key at `level` is `name` once decoded. */
  private keyIs(level: number, name: string): boolean {
    const start = this.keyStart[level];
    const end = this.keyEnd[level];
    if (end - start === name.length && this.text.startsWith(name, start)) return true;
    // Escaped (`"\u0074ools"`): each character takes 6 at most.
    if (end - start <= name.length || end - start > name.length * 6) return false;
    const raw = this.text.slice(start, end);
    return raw.includes('\\') && JSON.parse(`"${raw}"`) === name;
  }

  /** The path of the value at `level` (the keys and indices above it), as the body checks name it. */
  private pathTo(level: number): string {
    let path = '';
    for (let l = 0; l < level && l < this.tracked; l++) {
      let key: string;
      if (this.kinds[l] === ARRAY) key = String(this.counts[l] - 1);
      else {
        const raw = this.text.slice(this.keyStart[l], this.keyEnd[l]);
        key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
      }
      // As body-limits.ts joins them (an empty key or path adds no dot).
      path = path ? `${path}.${key}` : key;
    }
    return path;
  }
}
