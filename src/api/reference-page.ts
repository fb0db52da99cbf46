/**
 * The text of GET /docs before (or without) its scripts: Swagger UI draws the reference into
 * `<div id="swagger-ui">` once its scripts have run, and replaces whatever the div held. The server
 * puts a plain listing of the operations there, so a reader without scripts (a text browser,
 * scripts blocked, a slow link) still sees what the API offers and where the full description is.
 * It is plain HTML: no inline script or style, nothing a content security policy would refuse.
 */

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The parts of an OpenAPI document the listing reads. */
export interface OpenApiDocument {
  info?: { title?: string; description?: string };
  paths?: Record<string, Partial<Record<(typeof METHODS)[number], { summary?: string; tags?: string[] }>>>;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The operations of `spec`, by tag in order of first appearance, as HTML. */
export function operationsHtml(spec: OpenApiDocument): string {
  const byTag = new Map<string, string[]>();
  for (const [path, operations] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const operation = operations[method];
      if (!operation) continue;
      const tag = operation.tags?.[0] ?? 'Other';
      const summary = operation.summary ? `: ${escapeHtml(operation.summary)}` : '';
      const item = `<li><code>${method.toUpperCase()} ${escapeHtml(path)}</code>${summary}</li>`;
      byTag.set(tag, [...(byTag.get(tag) ?? []), item]);
    }
  }
  const sections = [...byTag].map(([tag, items]) => `<h2>${escapeHtml(tag)}</h2>\n<ul>\n${items.join('\n')}\n</ul>`);
  const title = escapeHtml(spec.info?.title ?? 'API');
  const description = spec.info?.description ? `<p>${escapeHtml(spec.info.description)}</p>\n` : '';
  return `<main id="reference-without-scripts">
<h1>${title}</h1>
${description}<p>This page draws an interactive reference once its scripts have run. Without them, here
is every operation. Their full description (parameters, bodies, responses) is the OpenAPI 3.1
document at <a href="/openapi.json">/openapi.json</a>; examples are in <code>docs/api.md</code> of
the Openline repository.</p>
${sections.join('\n')}
</main>`;
}

/** `page` (Swagger UI's index) with `listing` inside its empty `<div id="swagger-ui">`. */
export function withListing(page: string, listing: string): string {
  return page.replace('<div id="swagger-ui"></div>', () => `<div id="swagger-ui">${listing}</div>`);
}
