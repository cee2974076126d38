/* Every integration test, one line each: X(name) runs TEST(name). */
X(plugin_commands_byte_exact)
X(plugin_sdk_response_topics_and_properties)
X(plugin_forbidden_response_topic_disconnects)
X(plugin_unusable_response_topic_not_executed)
X(plugin_qos0_missing_correlation_and_version)
X(plugin_mqtt311_not_executed)
X(plugin_retained_request_not_kept)
