/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* broker_conf.h - the settings of the broker's own config file that
 * matter to the plugin (Mosquitto 2.0 does not hand them over). */
#ifndef SS_BROKER_CONF_H
#define SS_BROKER_CONF_H

#include <stdbool.h>
#include <stdint.h>

struct ss_broker_conf {
    uint64_t message_size_limit; /* MQTT's maximum when unset or unknown */
    uint64_t sys_interval;       /* seconds between $SYS updates; 10 when unset, 0: none */
    bool has_acl_file;
    int mount_points; /* mount_point lines: listeners whose clients' topics get a prefix */
    /* per_listener_settings true: Mosquitto 2.0 then never delivers the
     * tick event to the plugin, in which every batch commits. */
    bool per_listener_settings;
    int other_plugins; /* plugin / auth_plugin lines naming another library */
    /* Files or include_dir directories that could not be read (the broker
     * reads its configuration as root, the plugin after it dropped its
     * privileges): what they say is unknown. The first one's path. */
    int unreadable;
    char unreadable_path[256];
    /* the ports of the listeners with "protocol websockets" */
    uint16_t ws_ports[8];
    int ws_nports;
};

/* Read the file given to the broker with -c; defaults when there is none. */
void ss_read_broker_conf(struct ss_broker_conf *bc);

/* Bytes a SET value may have so that its notification (the largest
 * message it causes) fits within the message size limit. */
#define SS_NOTIFY_OVERHEAD 50u /* 36 bytes of header, "$" + 9 digits + CR LF, CR LF */

#endif
