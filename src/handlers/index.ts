/**
 * central-ledger's handler processes (`node src/handlers/index.js handler --prepare`, … as the
 * Mojaloop charts run them in /opt/app), and central-settlement's: the roles their flags name
 * (command-line.ts), /health on PORT, configured from the config/default.json beside src/.
 */
import { startMojaloopProcess } from '../start';
import { handlerProcess } from './command-line';

const args = process.argv.slice(2);
// The command line is the handler's: none of it is rc's configuration flags.
startMojaloopProcess({
  entryDir: __dirname,
  argv: [],
  roles: (service) => handlerProcess(args, service),
});
