import { MemoryBus } from '../../src/infra/bus/memory-bus.js';
import { describeBusContract } from './bus.contract.js';

describeBusContract('memory', async () => new MemoryBus(), (b) => b.close());
