import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PrincipalGuard } from './principal.guard';

@Module({ providers: [{ provide: APP_GUARD, useClass: PrincipalGuard }] })
export class AuthModule {}
