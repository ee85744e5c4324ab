import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's `chromium` package; CI installs it (.ci/run). Never a browser that playwright downloads. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // An operator reaches the service over plain HTTP under a host name (a cluster-internal URL), which the
  // browser treats unlike 127.0.0.1 (no upgrade exemption): resolve such names (the service's, and pages'
  // on other sites) to this machine's loopback.
  '--host-resolver-rules=MAP *.test 127.0.0.1',
];

/** Headless Chromium; fails (never skips) when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) ` +
        'or set CHROMIUM_PATH. This test must not be skipped.',
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
}
