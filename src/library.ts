/**
 * io-bridge as a library for a Nest app of your own (Fastify): `import { IoBridgeModule } from
 * 'io-bridge/nest'` (docs/agents.md#in-your-own-nest-app).
 */
export { IoBridgeModule, type IoBridgeModuleOptions } from './io-bridge.module';
export type { HostOptions, HostPrincipal } from './config/host';
