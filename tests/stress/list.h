/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* Longer tests, run by make stress. */
X(stress_soak_memory_is_stable)
