// Package sandbox runs a session's Linux machine: the exec contract the model
// sees (sandbox__<name>__exec), the Driver interface machines are started
// through, the agent that runs as the first process inside every machine, and
// the lifecycle Manager that starts, suspends, archives and retires machines.
//
// It must never serve HTTP, import echo or templ, or open a database: state
// goes through the Store interface and archives through archive.Store, so the
// lead can back them with gorm and object storage. It must never start a
// machine as host root or in the host's network namespace; drivers enforce
// that, and this package hands them nothing that would need it.
package sandbox
