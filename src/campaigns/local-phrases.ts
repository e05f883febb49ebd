// The local generator's words: every sentence, title and call to action it can write, per theme and per tone. It
// writes only these (with an offer read from the objective in the {offer} and {deal} slots), so nothing it sends
// can be a word cut to fit, the brief restated, or the targeting shown to the customer.
import type { Tone } from '../domain/campaigns.ts';

/** What a campaign is about, read from the objective and the audience's conditions. */
export const THEMES = ['winback', 'loyalty', 'welcome', 'launch', 'feedback', 'sale', 'general'] as const;
export type Theme = (typeof THEMES)[number];

/** One theme's words; lists of four give four distinct variants, with or without an offer. */
export interface ThemeWords {
  openings: readonly string[];
  bodies: { offer: readonly string[]; plain: readonly string[] };
  titles: { offer: readonly string[]; plain: readonly string[] };
  actions: { offer: readonly string[]; plain: readonly string[] };
  /** A sentence a longer copy adds. */
  extra: string;
}

/**
 * The themes' words. Slots: {offer} is the offer ("20% off"), {deal} the offer on the next order ("20% off your next
 * order"); capitalised ({Offer}, {Deal}) at the start of a sentence.
 */
export const THEME_WORDS: Record<Theme, ThemeWords> = {
  winback: {
    openings: ["We've missed you.", "It's been a while since we last saw you.", 'A lot has changed since your last visit.', "We'd love to welcome you back."],
    bodies: {
      offer: ['Come back and enjoy {deal}.', 'To welcome you back, enjoy {deal}.'],
      plain: ["There's plenty that's new, and we think you'll like it.", 'Everything you loved is still here, with more to discover.'],
    },
    titles: { offer: ['Come back for {offer}', '{Deal}', "We've missed you: {offer} inside", 'Welcome back: {offer}'], plain: ["We've missed you", "It's been a while", "Come and see what's new", 'Welcome back'] },
    actions: { offer: ['Claim your offer', 'Start saving', "See what's new", 'Shop now'], plain: ["See what's new", 'Shop the latest', 'Shop now', 'Take a look'] },
    extra: 'Your favourites are still here, waiting for you.',
  },
  loyalty: {
    openings: ['Thank you for shopping with us.', 'We wanted to say thank you.', 'Your support means a lot to us.', "We're grateful you keep choosing us."],
    bodies: {
      offer: ['To show our appreciation, enjoy {deal}.', '{Deal} is waiting for you.'],
      plain: ["We've set aside something special for you.", "There's something new we think you'll enjoy."],
    },
    titles: { offer: ['A thank you: {offer}', '{Offer}, with our thanks', '{Deal}', 'Thank you: {offer} for you'], plain: ['Thank you', 'A little thank you', 'With our thanks', 'Something for you'] },
    actions: { offer: ['Use your offer', 'Treat yourself', 'Shop now', 'Claim your thank-you'], plain: ['Take a look', 'Treat yourself', 'Shop now', "See what's new"] },
    extra: "It's our way of saying thank you.",
  },
  welcome: {
    openings: ['Welcome, and thank you for joining us.', "We're glad you found us.", "It's great to have you with us.", 'Thanks for choosing us.'],
    bodies: {
      offer: ['To get you started, enjoy {deal}.', '{Deal} is yours, to get you started.'],
      plain: ["There's plenty to discover, and we're here to help.", 'Take a look around and find something you love.'],
    },
    titles: { offer: ['Welcome: {offer} for you', '{Offer} to get you started', 'Your welcome offer: {offer}', '{Deal}'], plain: ['Welcome', "Glad you're here", 'Getting started', 'Nice to meet you'] },
    actions: { offer: ['Start shopping', 'Claim your offer', 'Shop now', 'Use your offer'], plain: ['Start exploring', 'Take a look', 'Shop now', 'Find your favourites'] },
    extra: "We're always here if you need a hand.",
  },
  launch: {
    openings: ['Something new has just arrived.', 'Our newest arrivals are here.', "We've been working on something new.", "There's something new to discover."],
    bodies: {
      offer: ['Be among the first to try it, and enjoy {deal}.', 'Try it now and enjoy {deal}.'],
      plain: ['Be among the first to take a look.', "We think you'll love it."],
    },
    titles: { offer: ['New in, with {offer}', 'Something new, and {offer}', 'Just arrived, with {offer}', '{Deal}'], plain: ['Something new is here', 'Just arrived', 'Fresh arrivals', 'New in'] },
    actions: { offer: ['Shop the new arrivals', 'Claim your offer', 'Take a look', 'Discover it now'], plain: ['Shop the new arrivals', 'Take a look', 'Discover it now', "See what's new"] },
    extra: "It's our favourite yet.",
  },
  feedback: {
    openings: ["We'd love to hear from you.", 'Your opinion matters to us.', 'How are we doing?', 'Do you have a moment for us?'],
    bodies: {
      offer: ['Share your thoughts, and enjoy {deal} as our thanks.', 'Tell us what you think, and {deal} is yours.'],
      plain: ['It only takes a moment and helps us get better.', 'Your answers help us improve what we do for you.'],
    },
    titles: { offer: ['Tell us, and get {offer}', 'Share your thoughts for {offer}', 'A quick question, and {offer}', '{Offer} for your feedback'], plain: ['How did we do?', 'A quick question', "We'd love your feedback", 'Tell us what you think'] },
    actions: { offer: ['Share your feedback', 'Tell us what you think', 'Answer a few questions', 'Give your opinion'], plain: ['Share your feedback', 'Tell us what you think', 'Answer a few questions', 'Give your opinion'] },
    extra: 'Every answer is read by our team.',
  },
  sale: {
    openings: ['Our sale is on.', 'Prices are down across the store.', "It's a great time to treat yourself.", "There's a deal waiting for you."],
    bodies: {
      offer: ['Enjoy {deal}.', '{Deal} is waiting for you.'],
      plain: ['Now is a great time to pick up something you love.', 'Find something you love for less.'],
    },
    titles: { offer: ['{Deal}', 'Take {offer}', '{Offer} is waiting', 'Save with {offer}'], plain: ['Our sale is on', 'Sale now on', 'Great prices, now', 'Time to treat yourself'] },
    actions: { offer: ['Shop the sale', 'Claim your offer', 'Save now', 'Start saving'], plain: ['Shop the sale', 'See the deals', 'Start saving', 'Take a look'] },
    extra: 'The best picks go first.',
  },
  general: {
    openings: ['We have some news for you.', "Here's something we think you'll like.", "We've got something to share.", 'A quick note from us.'],
    bodies: {
      offer: ['Enjoy {deal}.', '{Deal} is waiting for you.'],
      plain: ["Take a look at what's new.", "We think you'll find something you like."],
    },
    titles: { offer: ['{Deal}', 'Something for you: {offer}', '{Offer} is waiting', 'A little something: {offer}'], plain: ['News for you', 'Something for you', "What's new", 'A quick note'] },
    actions: { offer: ['Claim your offer', 'Shop now', 'Take a look', 'Use your offer'], plain: ['Take a look', 'Find out more', "See what's new", 'Shop now'] },
    extra: 'Thank you for being with us.',
  },
};

/** One tone's words: how an email greets and signs off, how copy closes, and where its lists start. */
export interface ToneWords {
  greeting: string;
  signOff: string;
  closings: readonly string[];
  /** Whether the opening sentence ends with an exclamation mark rather than a full stop. */
  exclaims: boolean;
  /** Where this tone starts in each list of four, so tones differ in opening, title and call to action too. */
  offset: number;
}

export const TONE_WORDS: Record<Tone, ToneWords> = {
  professional: { greeting: 'Hello,', signOff: 'Kind regards,', closings: ['We look forward to seeing you.', 'Thank you for your time.'], exclaims: false, offset: 0 },
  friendly: { greeting: 'Hi there,', signOff: 'Warm wishes,', closings: ["We'd love to see you soon.", 'Hope to see you soon.'], exclaims: true, offset: 1 },
  urgent: { greeting: 'Hi,', signOff: 'See you soon,', closings: ["Don't miss out.", "Now's the time."], exclaims: false, offset: 2 },
  promotional: { greeting: 'Hi there,', signOff: 'Happy shopping,', closings: ['You deserve a treat.', 'Go on, treat yourself.'], exclaims: true, offset: 3 },
};

/** What urgent copy adds, with and without an offer (with none, nothing for an "it" to refer to); and what an urgent call to action ends with. */
export const URGENCY = { offer: "This offer won't be around for long.", plain: 'The sooner, the better.', actionSuffix: 'today' };

/** The line that signs every email, and what a long email adds. */
export const SIGNATURE = 'The team';
export const EMAIL_EXTRA = 'If you have any questions, just reply to this email.';
/** A title that fits any channel, when no other does. */
export const FALLBACK_TITLE = 'News for you';

/** Every phrase the local generator can write, slots included: what its output's words are drawn from. */
export const LOCAL_PHRASES: readonly string[] = [
  ...Object.values(THEME_WORDS).flatMap((w) => [...w.openings, ...w.bodies.offer, ...w.bodies.plain, ...w.titles.offer, ...w.titles.plain, ...w.actions.offer, ...w.actions.plain, w.extra]),
  ...Object.values(TONE_WORDS).flatMap((w) => [w.greeting, w.signOff, ...w.closings]),
  URGENCY.offer,
  URGENCY.plain,
  URGENCY.actionSuffix,
  SIGNATURE,
  EMAIL_EXTRA,
  FALLBACK_TITLE,
  // How an offer reads on the next order ({deal}).
  'your next order',
  'on your next order',
  'with your next order',
];
