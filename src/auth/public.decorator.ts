import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'io-bridge:public';

/** A route any caller may reach without credentials (health, metrics); it gets no principal. */
export const Public = () => SetMetadata(IS_PUBLIC, true);
