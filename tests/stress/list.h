/* Longer tests, run by make stress. */
X(stress_soak_memory_is_stable)
