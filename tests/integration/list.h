/* Every integration test, one line each: X(name) runs TEST(name). */
X(plugin_commands_byte_exact)
X(plugin_sdk_response_topics_and_properties)
