/* Ends one specialisation of vrz_stencil.h: removes its macros and
 * acoustic_stencil.h's, so the next inclusion starts clean. */
#undef SWEEP_VRZ_L
#undef SWEEP_VRZ_FLUX_U_
#undef SWEEP_VRZ_TAP_BPSI_
#undef SWEEP_VRZ_TAP_RING_BPSI_
#undef SWEEP_VRZ_TAP_T_
#undef SWEEP_VRZ_FLUX_T_
#undef SWEEP_VRZ_FLUX_G_
#undef SWEEP_VRZ_ADJ_AXIS
#include "acoustic_stencil_undef.h"
