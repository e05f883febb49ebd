// Middleware as a chain of `async (ctx, next) => ...`.

export type Next = () => Promise<void>;
export type Middleware<C> = (ctx: C, next: Next) => Promise<void>;

/** Returns one function that runs the middleware in order; calling `next()` twice throws. */
export function compose<C>(middleware: readonly Middleware<C>[]): (ctx: C) => Promise<void> {
  return (ctx) => {
    let last = -1;
    const dispatch = async (index: number): Promise<void> => {
      if (index <= last) throw new Error('next() called more than once');
      last = index;
      const current = middleware[index];
      if (current) await current(ctx, () => dispatch(index + 1));
    };
    return dispatch(0);
  };
}
