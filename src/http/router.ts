// A path router: each route is a RegExp with named groups, matched in order.

export interface RouteMatch<T> {
  route: T;
  params: Record<string, string>;
}

export type RouteLookup<T> =
  | { kind: 'found'; match: RouteMatch<T> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

interface CompiledRoute<T> {
  method: string;
  pattern: RegExp;
  /** Whether the path has a `{name}` part. */
  patterned: boolean;
  route: T;
}

/** Turns `/v1/customers/{id}` into `^/v1/customers/(?<id>[^/]+)$`; literal parts are escaped. */
export function compilePath(path: string): RegExp {
  const source = path
    .split(/(\{[A-Za-z][A-Za-z0-9]*\})/)
    .map((part) => {
      const name = /^\{([A-Za-z][A-Za-z0-9]*)\}$/.exec(part)?.[1];
      return name ? `(?<${name}>[^/]+)` : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${source}$`);
}

/** Matches a method and path against routes in the order they were added. */
export class Router<T> {
  private readonly routes: CompiledRoute<T>[] = [];

  add(method: string, path: string, route: T): void {
    this.routes.push({ method: method.toUpperCase(), pattern: compilePath(path), patterned: /\{\w+\}/.test(path), route });
  }

  /**
   * Returns the first route matching both; else the methods the path allows (405); else not found. A path named
   * literally by a route belongs to the literal routes: `/v1/customers/imports/preview` is no `{id}` of a later one.
   */
  lookup(method: string, path: string): RouteLookup<T> {
    const allow = new Set<string>();
    let literal = false;
    for (const candidate of this.routes) {
      if (literal && candidate.patterned) continue;
      const groups = candidate.pattern.exec(path);
      if (!groups) continue;
      if (candidate.method === method || (method === 'HEAD' && candidate.method === 'GET')) {
        return { kind: 'found', match: { route: candidate.route, params: decodeParams(groups.groups) } };
      }
      allow.add(candidate.method);
      literal ||= !candidate.patterned;
    }
    if (allow.size === 0) return { kind: 'not_found' };
    return { kind: 'method_not_allowed', allow: [...allow].sort() };
  }
}

function decodeParams(groups: Record<string, string> | undefined): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(groups ?? {})) {
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      params[name] = raw; // a malformed escape is just an id that matches nothing
    }
  }
  return params;
}
