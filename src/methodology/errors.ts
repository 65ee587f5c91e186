/**
 * A value that does not parse, naming the offending member. The receipt, sample and snapshot parsers each throw a
 * subclass with their own stable `code`, so callers branch on the code and show `field` to the user.
 */
export class FieldError extends Error {
  constructor(
    readonly code: string,
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = new.target.name;
  }
}
