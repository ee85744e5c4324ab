import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';

/** Who an employee is, as the company's SSO left it on the request. */
export type Employee = { id: string; name: string };

/** The staff directory of this example; a company's SSO guard would verify a session or a token. */
const EMPLOYEES: Record<string, Employee> = {
  'key-ada': { id: 'ada', name: 'Ada Lovelace' },
  'key-alan': { id: 'alan', name: 'Alan Turing' },
};

/**
 * The company's own guard, global in the host app: it sets `request.employee` from the
 * `x-employee-key` header, or refuses the request. io-bridge never sees the key.
 */
@Injectable()
export class EmployeeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, unknown>; employee?: Employee }>();
    const employee = EMPLOYEES[String(request.headers['x-employee-key'])];
    if (!employee) throw new UnauthorizedException('Unknown employee key');
    request.employee = employee;
    return true;
  }
}
