// Model output is untrusted input: nothing a provider sends may smuggle control characters into stored or shown text.

// C0 controls except tab and newline, DEL, and the C1 controls; a carriage return goes too, so line ends are plain \n.
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Returns the text without control characters other than newline and tab. */
export function stripControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS, '');
}
