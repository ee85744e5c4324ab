import type { Check } from './check';
import { IO_BRIDGE_CHECKS } from './io-bridge-checks';
import { PROTOCOL_CHECKS } from './protocol-checks';

/**
 * Every check of the kit: the protocol's (and AG-UI 1.0's where the protocol defers to it), then
 * io-bridge's extensions. A new check goes into the list of its source's file (README "Adding a check").
 */
export const ALL_CHECKS: Check[] = [...PROTOCOL_CHECKS, ...IO_BRIDGE_CHECKS];
