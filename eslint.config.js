// Lint: the typescript-eslint recommended set plus the rules this codebase relies on.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // The client's generated REST types (openapi-typescript's output) and its browser module (esbuild's) are checked for
  // drift instead (test/client).
  {
    ignores: [
      "node_modules/**",
      "data/**",
      "dist/**",
      "test-results/**",
      "coverage/**",
      ".tmp/**",
      "packages/client/src/generated/**",
      "packages/client/browser/**",
      "packages/*/dist/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-restricted-globals": ["error", { name: "parseFloat", message: "Use Decimal; floats never touch prices." }],
      eqeqeq: ["error", "always", { null: "ignore" }],
    },
  },
  {
    files: ["src/methodology/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.name='Number']", message: "The methodology stays decimal: no Number()." },
        { selector: "CallExpression[callee.name='parseFloat']", message: "The methodology stays decimal." },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "No wall clock in the methodology." },
        { selector: "MemberExpression[object.name='Date'][property.name='now']", message: "No wall clock in the methodology." },
      ],
    },
  },
  {
    // The dashboard: browser ES modules served as they are (no build step).
    files: ["public/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: { window: "readonly", document: "readonly", location: "readonly", history: "readonly", URLSearchParams: "readonly" },
    },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { module: "writable", require: "readonly" } },
  },
  {
    files: ["bin/**/*.js", "eslint.config.js", ".ci/**/*.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
);
