// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The scenarios it follows: Copyright (c) Microsoft Corporation, MIT
// License (github.com/Azure/iot-operations-sdks); see debian/copyright.
// The Go SDK's leased lock integration scenarios (see state_store_test.go
// for where they come from).
package services

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/iot-operations-sdks/go/services/leasedlock"
	"github.com/Azure/iot-operations-sdks/go/services/statestore"
	"github.com/Azure/iot-operations-sdks/go/services/statestore/errors"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

type leaseFixture struct {
	*fixture
	lease *leasedlock.Lease[string, string]
}

type lockFixture struct {
	*fixture
	lock leasedlock.Lock[string, string]
}

func newLeaseFixture(ctx context.Context, t *testing.T, name string, o ...leasedlock.Option) *leaseFixture {
	f := &leaseFixture{fixture: newFixture(ctx, t)}
	f.lease = leasedlock.NewLease(f.client, name, o...)
	return f
}

func newLockFixture(ctx context.Context, t *testing.T, name string, o ...leasedlock.Option) *lockFixture {
	f := &lockFixture{fixture: newFixture(ctx, t)}
	f.lock = leasedlock.NewLock(f.client, name, o...)
	return f
}

func TestFencing(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(ctx, t, uuid.NewString())
	defer f.close()

	// A stamp taken before the lease exists: older than any token it gets.
	stale, err := app.GetHLC()
	require.NoError(t, err)

	holder, held, err := f.lease.Holder(ctx)
	require.NoError(t, err)
	require.False(t, held)
	require.Empty(t, holder)

	ok, err := f.lease.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	token, err := f.lease.Token(ctx)
	require.NoError(t, err)
	require.False(t, token.IsZero())

	holder, held, err = f.lease.Holder(ctx)
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, f.client.ID(), holder)

	f.expectSet(ctx, t, true, uuid.NewString(), statestore.WithFencingToken(token))

	_, err = f.client.Set(ctx, f.key, uuid.NewString(), statestore.WithFencingToken(stale))
	require.Equal(t, errors.FencingTokenLowerVersion, err)

	_, err = f.client.Del(ctx, f.key, statestore.WithFencingToken(stale))
	require.Equal(t, errors.FencingTokenLowerVersion, err)

	f.expectDel(ctx, t, 1, statestore.WithFencingToken(token))

	require.NoError(t, f.lease.Release(ctx))

	holder, held, err = f.lease.Holder(ctx)
	require.NoError(t, err)
	require.False(t, held)
	require.Empty(t, holder)
}

func TestEdit(t *testing.T) {
	ctx := context.Background()
	f := newLockFixture(ctx, t, uuid.NewString())
	defer f.close()

	initial, updated := "someInitialValue", "someUpdatedValue"

	f.expectSet(ctx, t, true, initial)
	require.NoError(t, f.lock.Edit(ctx, f.key, 10*time.Second,
		func(_ context.Context, val string, exists bool) (string, bool, error) {
			require.Equal(t, initial, val)
			require.True(t, exists)
			return updated, true, nil
		},
	))
	f.expectGet(ctx, t, updated)
}

func TestFencingWithSessionID(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(ctx, t, uuid.NewString(), leasedlock.WithSessionID(uuid.NewString()))
	defer f.close()

	stale, err := app.GetHLC()
	require.NoError(t, err)

	ok, err := f.lease.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	token, err := f.lease.Token(ctx)
	require.NoError(t, err)
	require.False(t, token.IsZero())

	f.expectSet(ctx, t, true, uuid.NewString(), statestore.WithFencingToken(token))

	_, err = f.client.Set(ctx, f.key, uuid.NewString(), statestore.WithFencingToken(stale))
	require.Equal(t, errors.FencingTokenLowerVersion, err)

	_, err = f.client.Del(ctx, f.key, statestore.WithFencingToken(stale))
	require.Equal(t, errors.FencingTokenLowerVersion, err)

	f.expectDel(ctx, t, 1, statestore.WithFencingToken(token))

	require.NoError(t, f.lease.Release(ctx))
}

func TestProactivelyReacquiringALease(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(ctx, t, uuid.NewString())
	defer f.close()

	ok, err := f.lease.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	first, err := f.lease.Token(ctx)
	require.NoError(t, err)
	require.False(t, first.IsZero())

	ok, err = f.lease.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	second, err := f.lease.Token(ctx)
	require.NoError(t, err)
	require.False(t, second.IsZero())

	require.Equal(t, -1, first.Compare(second))
}

func TestAcquireLockWhenLockIsUnavailable(t *testing.T) {
	ctx := context.Background()
	f1 := newLockFixture(ctx, t, uuid.NewString())
	defer f1.close()
	f2 := newLockFixture(ctx, t, f1.lock.Name)
	defer f2.close()

	require.NoError(t, f1.lock.Lock(ctx, 2*time.Second))

	first, err := f1.lock.Token(ctx)
	require.NoError(t, err)
	require.False(t, first.IsZero())

	// Blocks until the first holder's lease expires.
	require.NoError(t, f2.lock.Lock(ctx, time.Second))

	second, err := f2.lock.Token(ctx)
	require.NoError(t, err)
	require.False(t, second.IsZero())

	require.Equal(t, -1, first.Compare(second))
}

func TestEditWhenLockIsUnavailable(t *testing.T) {
	ctx := context.Background()
	f1 := newLockFixture(ctx, t, uuid.NewString())
	defer f1.close()
	f2 := newLockFixture(ctx, t, f1.lock.Name)
	defer f2.close()

	require.NoError(t, f1.lock.Lock(ctx, 2*time.Second))

	first, err := f1.lock.Token(ctx)
	require.NoError(t, err)
	require.False(t, first.IsZero())

	updated := "someUpdatedValue"
	require.NoError(t, f2.lock.Edit(ctx, f1.key, time.Second,
		func(_ context.Context, val string, exists bool) (string, bool, error) {
			require.Empty(t, val)
			require.False(t, exists)
			return updated, true, nil
		},
	))
	f1.expectGet(ctx, t, updated)
}

func TestEditDoesNotUpdateValueIfLockNotAcquired(t *testing.T) {
	ctx := context.Background()
	f1 := newLockFixture(ctx, t, uuid.NewString())
	defer f1.close()
	f2 := newLockFixture(ctx, t, f1.lock.Name)
	defer f2.close()

	require.NoError(t, f1.lock.Lock(ctx, 10*time.Second))

	first, err := f1.lock.Token(ctx)
	require.NoError(t, err)
	require.False(t, first.IsZero())

	initial, updated := "someInitialValue", "someUpdatedValue"

	f1.expectSet(ctx, t, true, initial)
	require.Equal(t, f2.lock.Edit(ctx, f1.key, time.Second,
		func(context.Context, string, bool) (string, bool, error) {
			return updated, true, nil
		},
		leasedlock.WithTimeout(time.Second),
	), context.DeadlineExceeded)
	f1.expectGet(ctx, t, initial)
}
