import { declaresAgUi1, isClientProtocol } from './versions';

describe('declaresAgUi1', () => {
  it.each(['1', '1.0', '1.2', '1.0.3', ' 1.0 '])('%p declares AG-UI 1.x', (v) => {
    expect(declaresAgUi1(v)).toBe(true);
  });

  it.each([undefined, '', '0.0.59', '2.0', '10', '1.x', 'v1', '1.0-beta', '01'])('%p does not', (v) => {
    expect(declaresAgUi1(v)).toBe(false);
  });
});

describe('isClientProtocol', () => {
  it('knows the two kinds of client', () => {
    expect(isClientProtocol('ag-ui')).toBe(true);
    expect(isClientProtocol('io-intelligence')).toBe(true);
    expect(isClientProtocol('AG-UI')).toBe(false);
    expect(isClientProtocol(undefined)).toBe(false);
  });
});
