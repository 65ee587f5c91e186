/** Text checks shared by the credential parsers. */
/** True when `text` has a C0 control character or DEL (a newline would forge a line boundary). */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
