// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
package extra

import (
	"context"
	"testing"

	"github.com/Azure/iot-operations-sdks/go/mqtt"
	"github.com/Azure/iot-operations-sdks/go/protocol"
	"github.com/Azure/iot-operations-sdks/go/services/statestore"
	"github.com/stretchr/testify/require"
)

// A state store client of the Go SDK on its own MQTT session to
// localhost:1883, both stopped when the test ends.
func connect(ctx context.Context, t *testing.T) *statestore.Client[string, string] {
	app, err := protocol.NewApplication()
	require.NoError(t, err)
	session, err := mqtt.NewSessionClient(mqtt.RandomClientID(), mqtt.TCPConnection("localhost", 1883))
	require.NoError(t, err)
	client, err := statestore.New[string, string](app, session)
	require.NoError(t, err)
	require.NoError(t, session.Start())
	t.Cleanup(func() { _ = session.Stop() })
	require.NoError(t, client.Start(ctx))
	t.Cleanup(client.Close)
	return client
}
