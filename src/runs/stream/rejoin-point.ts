/**
 * Where a rejoining stream starts: after its `Last-Event-ID` (what a browser's EventSource sends on
 * reconnecting, so it wins), else after `?after=`; each parsed by the route's own event-id format.
 * Undefined when the client named neither.
 */
export function rejoinPoint<T>(
  lastEventId: string | undefined,
  after: unknown,
  parse: (value: unknown, name: string) => T,
): T | undefined {
  if (lastEventId !== undefined) return parse(lastEventId, 'Last-Event-ID');
  if (after !== undefined) return parse(after, 'after');
  return undefined;
}
