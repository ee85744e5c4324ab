import { Injectable } from '@nestjs/common';

/** Set on shutdown: readiness goes red and new runs are refused while live ones are handed over or finish. */
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
