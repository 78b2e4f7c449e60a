-- Tool definitions pinned per version (issue 12 item 4): for each MCP server
-- URL of a version, the tools fetched while it was a draft, which publishing
-- freezes. Each definition (name, description, input schema, annotations)
-- carries its hash. No credential is stored: only what the server listed.
CREATE TABLE version_tool_pins (
    version_id TEXT NOT NULL,
    url TEXT NOT NULL,
    tools TEXT NOT NULL,
    fetched_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (version_id, url)
);
