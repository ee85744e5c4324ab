import { AguiEvent } from '../../protocol/agui-events';

/** One SSE frame (docs/protocol.md#the-stream): `id: <seq>` then `data: <json>`, LF only. */
export const frame = (seq: number, event: AguiEvent): string =>
  `id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`;

/** The events of frames written by {@link frame}, in order. */
export function parseFrames(frames: string): AguiEvent[] {
  return frames
    .split('\n\n')
    .filter(Boolean)
    .map((f) => JSON.parse(f.slice(f.indexOf('\ndata: ') + 7)) as AguiEvent);
}

/** `frames` without their `id:` lines: events sent outside the log (a raw line never starts so inside JSON). */
export const withoutIds = (frames: string): string => frames.replace(/^id: \d+\n/gm, '');
