import { Injectable } from '@nestjs/common';

/** Set on SIGTERM: readiness goes red and new runs are refused while active ones finish. */
@Injectable()
export class DrainState {
  private draining = false;

  get isDraining(): boolean {
    return this.draining;
  }

  begin(): void {
    this.draining = true;
  }
}
