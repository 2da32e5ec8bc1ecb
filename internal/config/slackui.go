package config

// SlackUI is how answers look in Slack.
type SlackUI struct {
	// Mode is BOT_SLACK_UI: auto (stream, and fall back to messages where
	// Slack refuses streaming), stream, or messages.
	Mode string
	// Tasks is BOT_SLACK_TASKS: how a streamed answer's tool calls show,
	// timeline (one card after another) or plan (grouped under a plan).
	Tasks string
}

func init() {
	Settings = append(Settings,
		Setting{"BOT_SLACK_UI", "slack.ui", "auto", "How answers show: stream (one streamed message with tool calls as task cards and the answer written as it comes), messages (a progress message, then the answer), or auto (stream, falling back to messages for a while in a workspace where Slack refuses it).",
			setEnum(func(c *Config) *string { return &c.SlackUI.Mode }, "auto", "stream", "messages")},
		Setting{"BOT_SLACK_TASKS", "slack.tasks", "timeline", "In a streamed answer, tool calls as a timeline (one card after another) or a plan (grouped).",
			setEnum(func(c *Config) *string { return &c.SlackUI.Tasks }, "timeline", "plan")},
	)
}
