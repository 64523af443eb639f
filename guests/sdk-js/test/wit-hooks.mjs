// Module hooks that let plain Node load plait-function.js outside a
// component: the `plait:function/log` import becomes a stub that records
// its calls in globalThis.plaitLog, and the helper file is read as an ES
// module although it sits in no package that says so.

const LOG_STUB = `data:text/javascript,${encodeURIComponent(
  'export function log(level, message) { (globalThis.plaitLog ??= []).push([level, message]); }',
)}`;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'plait:function/log@1.0.0') return { url: LOG_STUB, shortCircuit: true };
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.endsWith('/plait-function.js')) return nextLoad(url, { ...context, format: 'module' });
  return nextLoad(url, context);
}
