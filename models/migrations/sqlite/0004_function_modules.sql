-- A function package's WebAssembly module lives in the database beside its
-- manifest, so a restart or another replica loads it without a shared folder.
-- It has its own table so listing packages never reads megabytes of code.
CREATE TABLE function_modules (
	package_id TEXT PRIMARY KEY REFERENCES function_packages(id) ON DELETE CASCADE,
	wasm BLOB NOT NULL
);
