// `fs` plus a `globSync(pattern, options)` in the shape of Node 22's fs.globSync: returns the
// matching paths relative to options.cwd (default process.cwd()). The conformance package
// only calls it as globSync("**/checks.json", {cwd}) in its `tier-check` command.
import fs from 'node:fs';
import { globSync as globPackageSync } from 'glob';

export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
    const { cwd, exclude } = options;
    const ignore = Array.isArray(exclude) ? exclude : undefined;
    return globPackageSync(pattern, { cwd, ignore, dot: false, posix: false });
}
