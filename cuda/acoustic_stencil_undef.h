/* Ends one specialisation of acoustic_stencil.h: removes the macros it
 * defines, so the next inclusion (another order or dtype) starts clean. */
#undef SWEEP_H
#undef SWEEP_FN
#undef SWEEP_R
#undef SWEEP_FIRST_AXIS
#undef SWEEP_D2
#undef SWEEP_D1
#undef SWEEP_COEFFS
#undef SWEEP_LEAPFROG
#undef SWEEP_CPML_FWD
#undef SWEEP_W_PLAIN
#undef SWEEP_W_AXIS
#undef SWEEP_LD
#undef SWEEP_ST
#undef SWEEP_TAP_U_
#undef SWEEP_TAP_PSI_
#undef SWEEP_RING_TAP
#undef SWEEP_TAP_RING_PSI_
#undef SWEEP_FWD_AXIS
#undef SWEEP_FWD_AXIS_TAPS
#undef SWEEP_FWD_AXIS_OP
#undef SWEEP_TAP_G_
#undef SWEEP_TAP_AG_
#undef SWEEP_TAP_AZ_
#undef SWEEP_TAP_AP_
#undef SWEEP_ADJ_AXIS
#undef SWEEP_ADJ_AXIS_TAPS
