// Validates an OpenAPI document (a file path) with @seriousme/openapi-schema-validator.
// Prints {valid, version, errors} as JSON; exits 1 when the document is not valid.
import { Validator } from "@seriousme/openapi-schema-validator";

const validator = new Validator();
const res = await validator.validate(process.argv[2]);
let resolved = null;
if (res.valid) {
  try {
    validator.resolveRefs();
    resolved = true;
  } catch (e) {
    res.valid = false;
    res.errors = [{ message: "refs: " + e.message }];
  }
}
console.log(JSON.stringify({ valid: res.valid, version: validator.version, resolved, errors: res.errors ?? null }));
process.exit(res.valid ? 0 : 1);
