// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The scenarios it follows: Copyright (c) Microsoft Corporation, MIT
// License (github.com/Azure/iot-operations-sdks); see debian/copyright.
// The Go SDK's state store integration scenarios, run against this broker.
//
// The SDK's own integration tests live in the module
// github.com/Azure/iot-operations-sdks/go/test/integration, which has no
// tagged release and which the Go module proxy does not serve at any commit,
// so they cannot be fetched. These tests follow its package ./services
// (state_store_test.go and leased_lock_test.go at commit bbead0d16839)
// scenario by scenario, with the same names, steps and assertions, and
// drive the SDK itself, fetched through the Go module proxy at the versions
// pinned in go.mod. They dial localhost:1883 like the originals.
package services

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/Azure/iot-operations-sdks/go/mqtt"
	"github.com/Azure/iot-operations-sdks/go/protocol"
	"github.com/Azure/iot-operations-sdks/go/services/statestore"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// One application (and so one HLC) for the whole package, as upstream.
var app = protocol.Must(protocol.NewApplication())

// A connected session and state store client, and a fresh key.
type fixture struct {
	mqtt   *mqtt.SessionClient
	client *statestore.Client[string, string]
	key    string
}

func newFixture(ctx context.Context, t *testing.T) *fixture {
	f := &fixture{}
	var err error
	f.mqtt, err = mqtt.NewSessionClient(
		mqtt.RandomClientID(),
		mqtt.TCPConnection("localhost", 1883),
	)
	require.NoError(t, err)
	f.client, err = statestore.New[string, string](app, f.mqtt)
	require.NoError(t, err)
	require.NoError(t, f.mqtt.Start())
	require.NoError(t, f.client.Start(ctx))
	f.key = uuid.NewString()
	return f
}

func (f *fixture) close() {
	f.client.Close()
	_ = f.mqtt.Stop()
}

// GET returns want.
func (f *fixture) expectGet(ctx context.Context, t *testing.T, want string, o ...statestore.GetOption) {
	res, err := f.client.Get(ctx, f.key, o...)
	require.NoError(t, err)
	require.Equal(t, want, res.Value)
}

// GET returns an empty value; absent tells whether the version is zero.
func (f *fixture) expectEmpty(ctx context.Context, t *testing.T, absent bool, o ...statestore.GetOption) {
	res, err := f.client.Get(ctx, f.key, o...)
	require.NoError(t, err)
	require.Empty(t, res.Value)
	require.Equal(t, absent, res.Version.IsZero())
}

// SET of val answers applied.
func (f *fixture) expectSet(ctx context.Context, t *testing.T, applied bool, val string, o ...statestore.SetOption) {
	res, err := f.client.Set(ctx, f.key, val, o...)
	require.NoError(t, err)
	require.Equal(t, applied, res.Value)
}

// DEL answers n.
func (f *fixture) expectDel(ctx context.Context, t *testing.T, n int, o ...statestore.DelOption) {
	res, err := f.client.Del(ctx, f.key, o...)
	require.NoError(t, err)
	require.Equal(t, n, res.Value)
}

// VDEL of val answers n.
func (f *fixture) expectVDel(ctx context.Context, t *testing.T, n int, val string, o ...statestore.VDelOption) {
	res, err := f.client.VDel(ctx, f.key, val, o...)
	require.NoError(t, err)
	require.Equal(t, n, res.Value)
}

func TestStateStoreObjectCRUD(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	val := uuid.NewString()
	f.expectSet(ctx, t, true, val)
	f.expectGet(ctx, t, val)
	f.expectDel(ctx, t, 1)
	f.expectEmpty(ctx, t, true)
}

func TestStateStoreObjectExpiryTime(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	f.expectSet(ctx, t, true, uuid.NewString(), statestore.WithExpiry(time.Second))
	time.Sleep(2 * time.Second)
	f.expectEmpty(ctx, t, true)
}

func TestStateStoreConditionalSet(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	v1, v2 := uuid.NewString(), uuid.NewString()
	f.expectSet(ctx, t, true, v1, statestore.NotExists)
	f.expectSet(ctx, t, false, v1, statestore.NotExists)
	f.expectSet(ctx, t, false, v2, statestore.NotExistsOrEqual)
	f.expectSet(ctx, t, true, v1, statestore.NotExistsOrEqual)
	f.expectDel(ctx, t, 1)
}

func TestStateStoreConditionalDelete(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	val := uuid.NewString()
	f.expectSet(ctx, t, true, val)
	f.expectVDel(ctx, t, -1, uuid.NewString())
	f.expectVDel(ctx, t, 1, val)
	f.expectVDel(ctx, t, 0, val)
}

func TestStateStoreObserveSingleKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	ch, stop := f.client.Notify(f.key)
	defer stop()
	require.NoError(t, f.client.KeyNotify(ctx, f.key))

	val := uuid.NewString()
	f.expectSet(ctx, t, true, val)
	n := <-ch
	require.Equal(t, f.key, n.Key)
	require.Equal(t, "SET", n.Operation)
	require.Equal(t, val, n.Value)

	f.expectDel(ctx, t, 1)
	n = <-ch
	require.Equal(t, f.key, n.Key)
	require.Equal(t, "DELETE", n.Operation)
	require.Empty(t, n.Value)
}

func TestStateStoreObserveSingleKeyThatExpires(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	ch, stop := f.client.Notify(f.key)
	defer stop()
	require.NoError(t, f.client.KeyNotify(ctx, f.key))

	val := uuid.NewString()
	f.expectSet(ctx, t, true, val, statestore.WithExpiry(time.Second))
	n := <-ch
	require.Equal(t, f.key, n.Key)
	require.Equal(t, "SET", n.Operation)
	require.Equal(t, val, n.Value)

	n = <-ch
	require.Equal(t, f.key, n.Key)
	require.Equal(t, "DELETE", n.Operation)
	require.Empty(t, n.Value)
}

func TestStateStoreUnobserveSingleKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	ch, stop := f.client.Notify(f.key)
	defer stop()
	require.NoError(t, f.client.KeyNotify(ctx, f.key))

	f.expectSet(ctx, t, true, uuid.NewString())
	f.expectDel(ctx, t, 1)
	<-ch
	<-ch

	require.NoError(t, f.client.KeyNotifyStop(ctx, f.key))

	f.expectSet(ctx, t, true, uuid.NewString())
	f.expectDel(ctx, t, 1)

	select {
	case <-ch:
		t.Fail()
	case <-time.After(time.Second):
	}
}

func TestStateStoreEmptyValue(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	f.expectSet(ctx, t, true, "")
	f.expectEmpty(ctx, t, false)
	f.expectDel(ctx, t, 1)
}

func TestStateStoreEmptyKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	_, err := f.client.Set(ctx, "", "")
	require.ErrorIs(t, err, statestore.ErrArgument)
}

func TestStateStoreFromExecutor(t *testing.T) {
	ctx := context.Background()
	f := newFixture(ctx, t)
	defer f.close()

	client, err := mqtt.NewSessionClient(
		mqtt.RandomClientID(),
		mqtt.TCPConnection("localhost", 1883),
	)
	require.NoError(t, err)
	require.NoError(t, client.Start())
	defer func() { _ = client.Stop() }()

	listeners := make(protocol.Listeners, 0, 2)
	defer listeners.Close()

	enc := protocol.JSON[string]{}
	topic := "state-store-from-executor"

	invoker, err := protocol.NewCommandInvoker(app, client, enc, enc, topic)
	require.NoError(t, err)
	listeners = append(listeners, invoker)

	// A second command arrives while the executor's handler runs, before
	// the handler's state store SET: the SET's response must still reach
	// the shared MQTT client.
	var gate sync.RWMutex
	concurrent := sync.OnceFunc(func() {
		gate.Lock()
		go func() {
			gate.Unlock()
			_, _ = invoker.Invoke(ctx, uuid.NewString())
		}()
	})

	// The executor shares the state store client's MQTT client, as an
	// application would.
	executor, err := protocol.NewCommandExecutor(
		app, f.mqtt, enc, enc, topic,
		func(_ context.Context, req *protocol.CommandRequest[string]) (*protocol.CommandResponse[string], error) {
			concurrent()
			gate.RLock()
			defer gate.RUnlock()

			value := uuid.NewString()
			res, err := f.client.Set(ctx, req.Payload, value)
			require.NoError(t, err)
			require.Equal(t, true, res.Value)
			return protocol.Respond(value)
		},
		protocol.WithConcurrency(1),
	)
	require.NoError(t, err)
	listeners = append(listeners, executor)

	require.NoError(t, listeners.Start(ctx))

	res, err := invoker.Invoke(ctx, f.key)
	require.NoError(t, err)

	f.expectGet(ctx, t, res.Payload)
	f.expectDel(ctx, t, 1)
}
