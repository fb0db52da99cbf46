import { crashSuite } from './crash-scenario.js';

crashSuite('sqlite');
