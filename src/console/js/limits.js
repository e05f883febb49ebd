// @ts-check
// The channels' length limits, as the service enforces them (product.md section 6; a test compares the two).

/** Longest title, message and call to action per channel, in characters. */
export const CHANNEL_LIMITS = Object.freeze({
  sms: Object.freeze({ title: 60, message: 320, callToAction: 40 }),
  push: Object.freeze({ title: 60, message: 140, callToAction: 40 }),
  email: Object.freeze({ title: 120, message: 1200, callToAction: 60 }),
});

/** The service's objective bounds, in characters after trimming. */
export const OBJECTIVE = Object.freeze({ min: 10, max: 600 });
