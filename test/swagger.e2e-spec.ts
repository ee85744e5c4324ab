import { writeFileSync } from 'node:fs';
import { startApp, TestApp } from './support/app';
describe('dump', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startApp(); });
  afterAll(() => t.close());
  it('dumps', async () => {
    const r = await fetch(`${t.baseUrl}/docs-json`);
    writeFileSync('/tmp/docs.json', JSON.stringify(await r.json(), null, 2));
    const h = await fetch(`${t.baseUrl}/docs`);
    writeFileSync('/tmp/docs.html', `${h.status} ${JSON.stringify([...h.headers])}\n${await h.text()}`);
  });
});
