import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '../auth/principal';
import { ApiErrors } from '../common/api-errors.decorator';
import {
  AdminUsageQueryDto,
  AdminUsageView,
  QuotaView,
  SetQuotaDto,
  UsageQueryDto,
  UsageView,
} from './dto/usage.dto';
import { UsageService } from './usage.service';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

@ApiTags('usage')
@ApiErrors({ UNAUTHENTICATED: 'missing or invalid bearer token' })
@Controller()
@IoBridgeRoutes()
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get('usage')
  @ApiOperation({ summary: "The caller's token usage by day, agent and model, and its budget" })
  @ApiOkResponse({ type: UsageView })
  @ApiErrors({ VALIDATION_FAILED: 'days outside 1-366' })
  mine(@Query() query: UsageQueryDto, @CurrentPrincipal() principal: Principal): Promise<UsageView> {
    return this.usage.mine(query, principal);
  }

  @Get('admin/usage')
  @ApiOperation({ summary: "Every owner's token usage, the largest first (operators only)" })
  @ApiOkResponse({ type: AdminUsageView })
  @ApiErrors({
    VALIDATION_FAILED: 'days outside 1-366 or limit outside 1-500',
    FORBIDDEN: 'the caller is not an operator',
  })
  everyone(
    @Query() query: AdminUsageQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AdminUsageView> {
    return this.usage.everyone(query, principal);
  }

  @Put('admin/quotas/:resourceId')
  @ApiOperation({ summary: "Set one owner's token budget (operators only)" })
  @ApiOkResponse({ type: QuotaView })
  @ApiErrors({
    VALIDATION_FAILED: 'tokens not a whole number ≥ 0, or a bad window',
    FORBIDDEN: 'the caller is not an operator',
  })
  setQuota(
    @Param('resourceId') resourceId: string,
    @Body() dto: SetQuotaDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<QuotaView> {
    return this.usage.setQuota(resourceId, dto, principal);
  }
}
