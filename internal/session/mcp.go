package session

// MCPTeam is the Team of the sessions of conversations with askrepo's MCP
// server (the ask tool): they are not Slack threads, so nothing that
// answers in Slack (recovery after a restart) touches them.
const MCPTeam = "mcp"
