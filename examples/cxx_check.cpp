// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// cxx_check.cpp - the public headers from C++: they compile with
// -Wall -Wextra -Werror and their functions link with C names (extern
// "C"). Run by the tests, it checks an error text through the library.
#include <statestore/client.h>
#include <statestore/errors.h>
#include <statestore/leader.h>
#include <statestore/lease.h>

#include <cstdio>
#include <cstring>

int main()
{
    // Each of these links only with C names.
    auto close_fn = &ss_client_close;
    auto connect_fn = &ss_client_connect;
    auto keep_fn = &ss_lease_keep;
    auto campaign_fn = &ss_leader_campaign;
    if (close_fn == nullptr || connect_fn == nullptr || keep_fn == nullptr || campaign_fn == nullptr)
        return 1;
    const char *text = ss_strerror(SS_E_REFUSED);
    if (text == nullptr || std::strlen(text) == 0)
        return 1;
    std::printf("%s\n", text);
    return 0;
}
