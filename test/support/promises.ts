/**
 * Whether `p` settled once the microtasks queued now have run, without letting an event-loop turn
 * pass: for code that promises to answer at once, or only later.
 */
export async function settledNow(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}
