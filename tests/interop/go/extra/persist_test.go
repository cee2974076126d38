// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// SET with the SDK's persistence option: the request carries the user
// property aio-persistence: true, a per-key hint that this store, which
// keeps every key on disk, accepts and needs nothing more for.
package extra

import (
	"context"
	"testing"

	"github.com/Azure/iot-operations-sdks/go/services/statestore"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestSetWithPersist(t *testing.T) {
	ctx := context.Background()
	client := connect(ctx, t)

	key, val := uuid.NewString(), uuid.NewString()
	set, err := client.Set(ctx, key, val, statestore.WithPersist(true))
	require.NoError(t, err)
	require.True(t, set.Value)
	require.False(t, set.Version.IsZero())

	get, err := client.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, val, get.Value)
	require.Equal(t, 0, set.Version.Compare(get.Version))

	del, err := client.Del(ctx, key)
	require.NoError(t, err)
	require.Equal(t, 1, del.Value)
}
