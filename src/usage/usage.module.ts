import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';

@Module({ controllers: [UsageController], providers: [UsageService] })
export class UsageModule {}
