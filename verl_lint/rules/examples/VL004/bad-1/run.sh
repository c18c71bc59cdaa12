#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
#!/bin/bash
# padding
