// Module-resolution hook (see register.mjs): `fs` / `node:fs` imported from inside the
// conformance package resolves to fs-shim.mjs; every other importer gets the real module.
const SHIM = new URL('./fs-shim.mjs', import.meta.url).href;
const CONFORMANCE = '/node_modules/@modelcontextprotocol/conformance/';

export async function resolve(specifier, context, nextResolve) {
    if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes(CONFORMANCE)) {
        return { url: SHIM, shortCircuit: true };
    }
    return nextResolve(specifier, context);
}
