/**
 * A fixed secrets key for tests (SECRETS_KEY, src/secret-box.ts): the service processes a test starts with
 * `DATABASE_URL` need one, and a test that provisions keys in a store before the service starts must seal them under
 * the key the service will use.
 */
import { parseSecretsKey, secretBox, type SecretBox } from "../../src/secret-box.ts";

/** 32 bytes, base64: what `openssl rand -base64 32` prints. Only ever used by tests. */
export const TEST_SECRETS_KEY = "dGVzdC1vbmx5IHNlY3JldHMga2V5IDMyIGJ5dGVzISE=";

/** A box over TEST_SECRETS_KEY. */
export function testSecretBox(): SecretBox {
  return secretBox(parseSecretsKey(TEST_SECRETS_KEY)!);
}
