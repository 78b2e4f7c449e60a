package runtime

// permissionsDocLimits is docs/permissions.md's section on limits and tokens
// narrowed to the task (limits.go, tokens_narrow.go, sessiontoken.go);
// PermissionsDoc appends it.
const permissionsDocLimits = "\n## Limits\n\n" +
	"A permission may carry a limit; the one check takes it after finding the permission\n" +
	"that covers the call, and a permission without a limit that also covers the call is\n" +
	"preferred (a limit is spent only when nothing else allows the call).\n\n" +
	"- **A count per period**: `20 a day` — `hour`, `day`, `week` (from Monday) or `month`,\n" +
	"  each starting at a UTC boundary. Counted per permission and holder (the person, or\n" +
	"  the session calling), so each person seated in a role has their own 20.\n" +
	"- **A ceiling on an input**: `grant in workbench` — the call's value of the field must\n" +
	"  be one of the listed ones. `ToolCall.create` shows `grant` (the grant of the tool,\n" +
	"  e.g. `workbench`) and `tool` (its full name, e.g. `fn__workbench__run`);\n" +
	"  `Approval.approve` and `Approval.deny` show `grant` (the grant of the call decided).\n" +
	"  A verb that shows no such field is refused under such a limit.\n" +
	"- **A spend ceiling in SC a day** (UTC): counted on the verbs that cost money,\n" +
	"  `ToolCall.create` of a function or a sandbox, at the most the call can cost: a\n" +
	"  function call its longest deadline (60 s by default) at 0.01 SC a second (0.6 SC), a\n" +
	"  sandbox exec its `timeout_secs` (300 by default) at the machine's 0.02777778 SC a\n" +
	"  second. What the call then really cost is on the Usage page; the ceiling counts the\n" +
	"  most, so it is never overrun.\n\n" +
	"A call over a limit is refused with `limit_reached` (HTTP 429 with `Retry-After` for\n" +
	"a count or spend, 403 for an input ceiling), a detail naming the limit and when it\n" +
	"resets (`limit reached: Session.create * (role Billing; 20 a day): all 20 calls of this\n" +
	"day are used; it resets at 2026-12-03T00:00:00Z (in 5h3m0s)`), and is recorded on the Audit\n" +
	"page as `refused` with that reason. A call allowed under a limit records it with its\n" +
	"permission (`… (role Billing; 20 a day)`). The counters are exact under concurrency:\n" +
	"each unit is taken by one conditional statement (`INSERT … ON CONFLICT DO UPDATE …\n" +
	"WHERE used + 1 <= limit`) on SQLite and PostgreSQL, so fifty goroutines or two\n" +
	"replicas cannot both take the last unit. A unit taken by a call that then fails (a\n" +
	"bad input) stays taken.\n\n" +
	"## Tokens narrowed to the task\n\n" +
	"`Token.create` (the API tokens page, `POST /api/v1/tokens`) takes `permissions`, a\n" +
	"list of `\"Noun.verb scope\"` (`\"Approval.approve session:ses_…\"`; the scope is `*`\n" +
	"when left out). Each must be held by the person making the token, in a scope that\n" +
	"covers it (`*` covers everything; a tenant covers its sessions and vaults; an agent its\n" +
	"sessions); the first one not held is refused with 422 `permission_not_held` naming it\n" +
	"(`permissions[1]: you do not hold User.invite *`). Such a token holds only those\n" +
	"permissions, and only as long as its holder still does: unseating or narrowing the\n" +
	"person narrows their tokens at the next request. It counts on its holder's limits.\n\n" +
	"A token made with a narrowed token must list its permissions (422\n" +
	"`permissions_required`), a subset of that token's, and expires no later than it: a\n" +
	"token can be narrowed further, never widened. Revoking a token revokes the tokens\n" +
	"made with it. Making and revoking a token are Changes.\n\n" +
	"A session's agent token (`sbs_…`) acts only on its own session, with the session's\n" +
	"verbs and the tools of its version. It stops when the session ends, or earlier when\n" +
	"`Session.create` sets `token_expires` (`\"2h\"`, `\"30d\"`): past it, it answers 401\n" +
	"`token_expired` saying so, while the session stays open to people.\n"
