// The session every record writer of probes/records/ writes through (probes/session.h),
// declared only: a training loop that writes these records needs no more of it here.
#pragma once

namespace dsdiag::probes {
class Session;
}
