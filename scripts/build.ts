/**
 * `npm run build`: lays out dist/ as the image lays out /opt/app (Dockerfile), so that the
 * commands Mojaloop's charts run in /opt/app run the same way from dist/:
 *
 *   dist/src/**               the service, compiled (tsconfig.build.json: src/ only)
 *   dist/config/default.json  our central-ledger-format defaults, config/default.json (the charts
 *                             mount their own ConfigMap over /opt/app/config)
 *   dist/package.json         the root's name, version and dependencies; the scripts the charts
 *                             call (`start`, `migrate`) as plain node: no compiler in the image
 *   dist/package-lock.json    the root's lock less its development-only packages: `npm ci
 *                             --omit=dev` in dist/ installs exactly the versions the root has
 *
 * Locally `cd dist && node src/api/index.js` finds node_modules in the repository root. The
 * output directory is emptied first (nothing stale reaches an image); `--out-dir DIR` builds
 * elsewhere (the tests do).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface PackageManifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  type?: string;
  engines?: Record<string, string>;
  scripts?: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
  overrides?: Record<string, unknown>;
  [field: string]: unknown;
}

interface LockedPackage {
  dev?: boolean;
  [field: string]: unknown;
}

export interface PackageLock {
  name: string;
  version: string;
  lockfileVersion: number;
  packages: Record<string, LockedPackage>;
  [field: string]: unknown;
}

/**
 * What dist/package.json says: the scripts of central-ledger's image (the charts run `npm run
 * migrate` in their pre-install Job; `npm start` is its default command), paths relative to
 * dist/ = /opt/app. The migration reads central-ledger's configuration there (migrate-cli.ts).
 */
export const IMAGE_SCRIPTS = {
  start: 'node src/api/index.js',
  migrate: 'node src/metadata/migrate-cli.js',
  'migrate:ledger': 'node src/migrate-ledger.js',
} as const;

/** The root's manifest as the image needs it: what `npm ci --omit=dev` reads, no dev tools. */
function imageManifest(root: PackageManifest): PackageManifest {
  const carried = (fields: string[]): Partial<PackageManifest> =>
    Object.fromEntries(fields.filter((f) => root[f] !== undefined).map((f) => [f, root[f]]));
  return {
    name: root.name,
    version: root.version,
    ...carried(['description', 'private', 'license', 'type', 'engines']),
    scripts: { ...IMAGE_SCRIPTS },
    dependencies: root.dependencies,
    // Pins the root makes on transitive packages: the same tree as the root's.
    ...carried(['overrides']),
  };
}

/**
 * The root's lock for the image's manifest: its root entry describes that manifest (no
 * devDependencies, so `npm ci` finds the two in step) and the packages only development needs
 * are gone; every other entry is the root's, byte for byte.
 */
function imageLock(rootLock: PackageLock, manifest: PackageManifest): PackageLock {
  const rootEntry = rootLock.packages[''] ?? {};
  const { devDependencies: _devDependencies, ...kept } = rootEntry;
  const packages: Record<string, LockedPackage> = {
    '': {
      ...kept,
      name: manifest.name,
      version: manifest.version,
      dependencies: manifest.dependencies,
    },
  };
  for (const [path, entry] of Object.entries(rootLock.packages)) {
    if (path !== '' && entry.dev !== true) packages[path] = entry;
  }
  return { ...rootLock, name: manifest.name, version: manifest.version, packages };
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const writeJson = (file: string, value: unknown): void =>
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** Builds `root` (the repository) into `outDir`, emptied first. Throws on a compile error. */
function buildImageLayout(options: { root: string; outDir: string }): void {
  const { root, outDir } = options;
  rmSync(outDir, { recursive: true, force: true });
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
  const compiled = spawnSync(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir],
    { cwd: root, stdio: 'inherit' },
  );
  if (compiled.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed`);
  mkdirSync(join(outDir, 'config'), { recursive: true });
  copyFileSync(join(root, 'config', 'default.json'), join(outDir, 'config', 'default.json'));
  const manifest = imageManifest(readJson<PackageManifest>(join(root, 'package.json')));
  writeJson(join(outDir, 'package.json'), manifest);
  const lock = imageLock(readJson<PackageLock>(join(root, 'package-lock.json')), manifest);
  writeJson(join(outDir, 'package-lock.json'), lock);
}

/**
 * `--out-dir DIR`, else the repository's dist/. A relative DIR is taken from where npm was run
 * (INIT_CWD): npm runs the script itself in the repository root.
 */
function outDirFrom(argv: string[], root: string): string {
  const at = argv.indexOf('--out-dir');
  if (at === -1) return join(root, 'dist');
  const value = argv[at + 1];
  if (value === undefined) throw new Error('--out-dir needs a directory');
  return resolve(process.env['INIT_CWD'] ?? process.cwd(), value);
}

if (require.main === module) {
  const root = resolve(__dirname, '..');
  try {
    buildImageLayout({ root, outDir: outDirFrom(process.argv.slice(2), root) });
  } catch (error) {
    process.stderr.write(`build failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
