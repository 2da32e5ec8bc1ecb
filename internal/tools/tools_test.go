package tools

import (
	"context"
	"encoding/json"
)

// runText runs tool and returns the text the model reads, for the tests
// that look at nothing else.
func runText(ctx context.Context, tool Tool, input json.RawMessage) (string, error) {
	out, err := tool.Run(ctx, input)
	return out.Text, err
}
