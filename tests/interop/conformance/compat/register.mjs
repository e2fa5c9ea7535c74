// Preload for Node < 22: `@modelcontextprotocol/conformance` does
//   import { globSync } from "fs"
// which Node 20 does not export, so the whole CLI fails to link. This file is loaded with
// `node --import ./compat/register.mjs ...` and installs a module-resolution hook (hooks.mjs)
// that hands the conformance package a copy of `fs` extended with `globSync` from the
// `glob` npm package (fs-shim.mjs). Nothing else is changed; on Node >= 22 it does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
    register('./hooks.mjs', import.meta.url);
}
